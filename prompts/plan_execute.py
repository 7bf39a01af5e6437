"""Plan-and-Execute's prompts: planning, each step, replanning and the answer."""

PLANNER_SYSTEM = """You plan the work on a request before anyone starts on it.
Split the user's latest request into as few short steps as it needs, at most {high}, in
order. A question that one tool call or one calculation (however long) answers is ONE
step, the question itself: "What is (12 + 7) * 5 - 3?" is the plan
"1. What is (12 + 7) * 5 - 3?". Never write the same step twice. Each step is one
concrete sub-task that a worker with the tools below can carry out on its own; name the
things it is about (never "it" or "the above"). The last step produces what the final
answer needs. Do not carry out the steps yourself.

Tools the worker can use:
{tools}

Without JSON, reply with a numbered list of the steps ("1. ...", one per line)."""

PLANNER_NO_TOOLS = "(none: each step is done by reasoning alone)"

EXECUTE_STEP = """You are carrying out one step of a plan made for this request:
{request}

The plan:
{plan}

Results of the earlier steps:
{results}

Now do step {number} only: {step}
Give the result of this step as your final answer."""

EARLIER_RESULTS_LEFT_OUT = "(steps 1 to {count}: results left out to fit the context window)"

REPLAN_SYSTEM = """You keep a plan up to date while it is carried out. The last step did not
finish. From the results so far, return the steps still needed to answer the request, in
order, at most {room}: try that step another way, keep the planned steps that still make
sense, change or drop the others, and return an empty list when the results already
answer the request. Without JSON, reply with a numbered list of the steps, or with DONE
when nothing is left to do."""

REPLAN_USER = """Request:
{request}

Steps done and their results:
{results}

Steps still planned:
{remaining}"""
