"""The run viewer behind `steadyloop ui`: a local, read-only web page over the run log.

- `data`: the one module that reads the log, shaping what it finds as the JSON the page uses.
- `entries`, `timeline`: pure functions from logged events to transcript entries, timeline marks
  and per-turn figures.
- `app`: the Starlette application (JSON API, page, static assets), refusing anything but GET.
- `server`: binds the address and runs the application with uvicorn.

Starlette and uvicorn come with the `ui` extra and are imported only by `app` and `server`, so
`import steadyloop` never loads them.
"""
