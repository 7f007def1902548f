"""The pytest plugin's tests: black-box runs of pytest through ``pytester``.

The runs that need a broker start a throwaway GarageMQ of their own (it starts in under a
second) through ``--amqp-broker``; a broker that cannot start fails them, never skips them.
"""

pytest_plugins = ["pytester"]
