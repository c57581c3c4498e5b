"""The Bedrock adapter (Claude through the SDK's Bedrock client), against a stand-in of
Bedrock's wire."""
