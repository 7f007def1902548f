"""The engine, which knows no protocol: events (:mod:`.events`), the runner that sends cases
fast (:mod:`.runner`), the oracles and signatures, verdicts against a profile, fuzz campaigns,
crash triage and shrinking, stateful programs, conformance runs, and replays. Its modules are
imported one by one (this package imports nothing), so that the record handler can read the
events without the engine."""
