"""A DBOS worker for the durable-run tests, as a process of its own.

    python durable_worker.py SYSTEM_DB_URL STORE_URL start|recover PREFIX PROMPT...

`start` starts one workflow per prompt (ids PREFIX0, PREFIX1, ...) and waits for them;
`recover` only launches DBOS, which recovers the workflows a dead worker left, and waits for
those ids. Prints the outputs as a JSON list. The agent is `batch.agents`' fake one, durable.
The workflows take turns at the three ways of starting a run in one (`FORMS`), the last one
with `if_exists="resume"`.
"""

from __future__ import annotations

import asyncio
import json
import sys

from dbos import DBOS, SetWorkflowID

from batch import agents
from steadyloop.engines.dbos import durable
from steadyloop.store import open_store

system_db, store_url, mode, prefix, *prompts = sys.argv[1:]
DBOS(
    config={
        "name": "steadyloop-durable-test",
        "system_database_url": system_db,
        "log_level": "WARNING",
    }
)
agent = agents.make_agent()
agent.store = open_store(store_url)
durable(agent)


FORMS = ("if_exists", "plain", "run_id")


@DBOS.workflow()
async def answer(prompt: str, form: str) -> str:
    if form == "plain":
        return (await agent.run(prompt)).output
    if form == "run_id":
        return (await agent.run(prompt, run_id=DBOS.workflow_id)).output
    return (await agent.run(prompt, run_id=DBOS.workflow_id, if_exists="resume")).output


async def main() -> list[str]:
    DBOS.launch()
    ids = [f"{prefix}{index}" for index in range(len(prompts))]
    if mode == "start":
        handles = []
        for index, (workflow_id, prompt) in enumerate(zip(ids, prompts, strict=True)):
            form = FORMS[(index - len(prompts) + 1) % len(FORMS)]
            with SetWorkflowID(workflow_id):
                handles.append(await DBOS.start_workflow_async(answer, prompt, form))
        return [await handle.get_result() for handle in handles]
    return [await (await DBOS.retrieve_workflow_async(wid)).get_result() for wid in ids]


if __name__ == "__main__":
    outputs = asyncio.run(main())
    print(json.dumps(outputs))
    DBOS.destroy()
