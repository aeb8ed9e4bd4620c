"""A job's life after the claim: transitions (check-in, start, complete, release, cancel),
photo evidence (an upload slot, and attaching a photo to the before or after slot), and the
business's rating of the completed work."""

from typing import Any

from aws_lambda_powertools.event_handler import Response

from dispatch.auth import Role
from dispatch.errors import Code
from dispatch.http.keyed import KeyedResolver
from dispatch.http.openapi import KEYED_WRITE, answers
from dispatch.http.resolver import entrypoint
from dispatch.jobs import commands, photos
from dispatch.jobs.models import Job, JobRating, Photo, PhotoUpload
from dispatch.jobs.requests import AttachPhoto, PhotoRequest, RateJob, TransitionRequest
from dispatch.models import ApiId

app = KeyedResolver()


@app.endpoint(
    "POST",
    "/jobs/<job_id>/transitions",
    roles={Role.WORKER, Role.BUSINESS},
    operation_id="transitionJob",
    responses=answers(
        200,
        Job,
        *KEYED_WRITE,
        Code.NOT_FOUND,
        Code.VERSION_CONFLICT,
        Code.ILLEGAL_TRANSITION,
        Code.JOB_UNAVAILABLE,
        Code.BEFORE_PHOTO_REQUIRED,
        Code.AFTER_PHOTO_REQUIRED,
    ),
    summary="Move a job: check_in, start, complete, release or cancel",
)
def transition(job_id: ApiId, request: TransitionRequest) -> Response[Any]:
    caller = app.caller
    return app.answered(
        lambda conn, key: commands.transition(
            conn, job_id, caller, request.event, request.version, key
        )
    )


@app.endpoint(
    "POST",
    "/photos",
    roles={Role.WORKER},
    operation_id="createPhotoUpload",
    location="{upload_url}",
    responses=answers(201, PhotoUpload, *KEYED_WRITE),
    summary="Get an upload slot for a photo (a presigned PUT URL)",
)
def create_photo(request: PhotoRequest) -> Response[Any]:
    worker = app.caller
    return app.answered(
        lambda conn, key: photos.create_upload(conn, worker.id, request, key), status=201
    )


@app.endpoint(
    "PUT",
    "/jobs/<job_id>/photos/<slot>",
    roles={Role.WORKER},
    operation_id="attachPhoto",
    responses=answers(
        200, Job, *KEYED_WRITE, Code.NOT_FOUND, Code.PHOTO_SLOT_CLOSED, Code.PHOTO_NOT_UPLOADED
    ),
    summary="Attach an uploaded photo (before or after)",
)
def attach_photo(job_id: ApiId, slot: Photo, request: AttachPhoto) -> Response[Any]:
    worker = app.caller
    return app.answered(
        lambda conn, key: commands.attach_photo(
            conn, job_id, worker.id, slot, request.photo_id, key
        )
    )


@app.endpoint(
    "POST",
    "/jobs/<job_id>/rating",
    roles={Role.BUSINESS},
    operation_id="rateJob",
    location="/jobs/{job_id}",
    responses=answers(
        201, JobRating, *KEYED_WRITE, Code.NOT_FOUND, Code.ILLEGAL_TRANSITION, Code.ALREADY_RATED
    ),
    summary="Rate the worker of a completed job (once)",
)
def rate(job_id: ApiId, request: RateJob) -> Response[Any]:
    business = app.caller
    return app.answered(
        lambda conn, key: commands.rate_job(conn, job_id, business.id, request.stars, key),
        status=201,
    )


lambda_handler = entrypoint(app)
