"""The run viewer, over HTTP and in a headless Chromium."""
