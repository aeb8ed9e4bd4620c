"""Logger and metrics shared by every function (Powertools)."""

import warnings

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

# Most requests record no metric; that is not worth a warning per invocation.
warnings.filterwarnings("ignore", "No application metrics to publish", UserWarning)

logger = Logger(service="dispatch")
metrics = Metrics(namespace="Dispatch", service="dispatch")


def count(name: str, value: int = 1) -> None:
    record(name, MetricUnit.Count, value)


def record(name: str, unit: MetricUnit, value: float) -> None:
    # With metrics disabled (the local stack, the simulator) Powertools still keeps every value
    # and never clears them: a long local run would grow without end, and every hundredth value
    # would print anyway. Disabled means not recorded at all.
    if not is_metrics_disabled():
        metrics.add_metric(name=name, unit=unit, value=value)
