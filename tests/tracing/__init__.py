"""OpenTelemetry spans, costs, and the CLI's OTLP export."""
