"""The simulated chip around the cores: the tasks an orchestration submits, the
dependencies the runtime derives between them, and their schedule on the chip's cores.

    tasks       Task, TaskArg, Edge: a submission and what the tracker made of it
    deps        the runtime's dependency tracker (creator retention, producer lookup over
                overlapping bytes, producer registration)
    scheduler   the discrete-event chip: orchestrator, ready queues, cores, latencies
    races       two tasks that ran unordered over the same bytes
"""
