"""What a test's child process runs first when the test will signal it.

The product keeps a signal disposition it inherits as "ignored" (the nohup convention: a run
started with SIGINT or SIGHUP ignored stays immune), so a child would inherit the test run's:
a suite started under ``nohup``, or as a shell's background job (SIGINT ignored), would see
its signals ignored and fail. The child sets those of an interactive run itself (a
``preexec_fn`` is not safe in a test process that has threads).
"""

#: Python code for the start of a child's ``-c`` program.
SIGNALS = """import signal
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
signal.signal(signal.SIGHUP, signal.SIG_DFL)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
"""

#: A ``-c`` program that runs the command line (its arguments follow) as an interactive run,
#: as the ``rfcircuits`` program does.
CLI = SIGNALS + """from rfcircuits.cli.main import entry
entry()
"""
