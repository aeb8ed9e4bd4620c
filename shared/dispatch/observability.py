"""Logger and metrics shared by every function (Powertools)."""

import warnings

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

# Most requests record no metric; that is not worth a warning per invocation.
warnings.filterwarnings("ignore", "No application metrics to publish", UserWarning)

logger = Logger(service="dispatch")
metrics = Metrics(namespace="Dispatch", service="dispatch")


def count(name: str, value: int = 1) -> None:
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
