"""The resolver of the functions whose routes change state under an Idempotency-Key and keep
their answers (dispatch.idempotency): the change and its key in one statement, a retry
replayed, the change's events relayed after the commit. Apart from dispatch.http.resolver, so
that a function with no such route (reads, a latest-wins write) imports neither the
idempotency store nor the outbox relay."""

import json
from collections.abc import Callable
from typing import Any

import psycopg
from aws_lambda_powertools.event_handler import Response

from dispatch import db, idempotency
from dispatch.http.resolver import JSON, STATE_CHANGING, DispatchResolver
from dispatch.models import Resource
from dispatch.outbox import relay


class KeyedResolver(DispatchResolver):
    keeps_answers = True

    # -- running a state change -----------------------------------------------------------
    def answered(
        self,
        command: Callable[[db.Connection, idempotency.KeyedRequest], Resource],
        status: int = 200,
        then: Callable[[Resource], None] | None = None,
    ) -> Response[Any]:
        """Run `command` under the caller's Idempotency-Key: its one statement records the key
        with its answer (dispatch.idempotency), one round trip."""
        request = self._keyed_request()
        return self._after(
            db.run(lambda conn: idempotency.execute(conn, request, command, status)), then
        )

    def _after(
        self, answer: idempotency.Answer, then: Callable[[Resource], None] | None
    ) -> Response[Any]:
        """The answer or its replay; after a fresh success commits, the changed job's events
        are relayed and `then` runs (best effort: neither fails what already committed)."""
        if answer.made is not None:
            if (job_id := answer.made.changed_job()) is not None:
                relay.after_commit(db.connection(), job_id)  # the change's events, now
            if then is not None:
                then(answer.made)
        return self._stored_answer(answer)

    def _keyed_request(self) -> idempotency.KeyedRequest:
        event = self.current_event
        return idempotency.KeyedRequest(
            principal=self.caller.id,
            key=event.headers["idempotency-key"],
            fingerprint=idempotency.fingerprint(
                event.request_context.http.method,
                event.raw_event.get("routeKey", event.path),
                dict(event.path_parameters or {}),
                event.json_body,  # parsed once, by the validation that already ran
            ),
            request_id=self.request_id,
        )

    def _replay(self) -> Response[Any] | None:
        """The stored answer when this exact request was already answered under its key: a
        retry replays even if its body no longer validates (a window that ended since)."""
        event = self.current_event
        if (
            event.request_context.http.method not in STATE_CHANGING
            or event.raw_event.get("routeKey") in self._unstored
            or "caller" not in self.context
        ):
            return None
        try:
            request = self._keyed_request()
            answer = db.run(lambda conn: idempotency.answered(conn, request))
        except (ValueError, psycopg.Error):  # not JSON, or no database: the 400 stands
            return None
        if answer is None:
            return None
        return self._stored_answer(answer)

    def _stored_answer(self, answer: idempotency.Answer) -> Response[Any]:
        """A keyed answer, fresh or replayed; a 201 says where (`Location`, replays too)."""
        headers = {"Idempotent-Replayed": "true"} if answer.replayed else {}
        template = self._locations.get(self.current_event.raw_event.get("routeKey", ""))
        if answer.status == 201 and template is not None:
            headers["Location"] = template.format_map(json.loads(answer.body))
        return Response(answer.status, JSON, answer.body, headers=headers)
