"""The command line: run, resume, show, replay, prompts as bytes, SIGTERM."""
