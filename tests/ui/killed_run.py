"""A logged run whose one tool call kills its own process, leaving the run open in the log.

python killed_run.py STORE
"""

from __future__ import annotations

import os
import signal
import sys

from steadyloop import Agent, tool
from steadyloop.testing import ScriptedModel
from ui.runlogs import call, reply


@tool
def charge(amount: int) -> str:
    """Charges the customer's card `amount` euros."""
    os.kill(os.getpid(), signal.SIGKILL)
    return f"charged {amount}"


if __name__ == "__main__":
    model = ScriptedModel([reply(call("k", "charge", amount=30))], name="gpt-4.1-mini")
    Agent(model, tools=[charge], store=sys.argv[1]).run_sync("Charge the order's 30 euros.")
