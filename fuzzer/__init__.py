"""amqpfuzz's driving layer: throwaway brokers and targets (:mod:`.brokers`), a driver per
protocol family (:mod:`.protocols`), the record contract (:mod:`.records`), the engine that runs
campaigns, programs and scenarios and emits events (:mod:`.engine`), their handlers (records:
:mod:`.recording`; the terminal: :mod:`.cli`; pytest: :mod:`.plugin`), and campaigns on Spark
(:mod:`.cluster`)."""
