from dispatch.idempotency import fingerprint


def test_key_order_and_whitespace_do_not_change_the_fingerprint() -> None:
    a = fingerprint("POST", "POST /jobs/{job_id}/accept", {"job_id": "j"}, {"version": 1, "x": [1]})
    b = fingerprint("post", "POST /jobs/{job_id}/accept", {"job_id": "j"}, {"x": [1], "version": 1})
    assert a == b


def test_any_part_of_the_request_changes_the_fingerprint() -> None:
    base = ("POST", "POST /jobs/{job_id}/accept", {"job_id": "j"}, {"version": 1})
    variants = [
        ("PUT", *base[1:]),
        (base[0], "POST /jobs", *base[2:]),
        (*base[:2], {"job_id": "k"}, base[3]),
        (*base[:3], {"version": 2}),
        (*base[:3], None),
    ]
    assert len({fingerprint(*v) for v in [base, *variants]}) == len(variants) + 1
