"""Logger and metrics shared by every function (Powertools)."""

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

logger = Logger(service="dispatch")
metrics = Metrics(namespace="Dispatch", service="dispatch")


def count(name: str, value: int = 1) -> None:
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
