"""The pytest plugin's tests: black-box runs of pytest through ``pytester``.

``pytester`` is enabled for the whole suite in pyproject.toml (``-p pytester``): pytest allows
``pytest_plugins`` only in the top-level conftest. The runs that need a broker start a
throwaway GarageMQ of their own (it starts in under a second) through ``--amqp-broker``; a
broker that cannot start fails them, never skips them.
"""
