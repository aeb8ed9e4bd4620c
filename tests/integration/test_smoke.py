from tests.support import BUSINESS, Api, make_job, make_worker, worker


def test_create_then_accept(api: Api) -> None:
    job = make_job(api)
    make_worker(api, worker(1))
    reply = api.call("POST", f"/jobs/{job['id']}/accept", worker(1), {})
    assert reply.status == 200, reply.body
    assert reply.body["status"] == "assigned"
    assert api.call("GET", f"/jobs/{job['id']}", BUSINESS).status == 200
