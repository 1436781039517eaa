"""Where tasks run: the Executor interface (`base`), its local process pool (`local`, the
default), an isolated process per task (`isolated`), Ray (`ray_executor`), the one task body and
its signal rules (`body`, `signals`), and the child-process helper (`child`).

Nothing is imported here: a process that needs only `execution.child` (the tracking process,
an evaluation worker) does not import the pool and multiprocessing with it.
"""
