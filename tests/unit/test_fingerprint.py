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


def test_an_id_in_either_case_and_a_whole_number_as_a_float_are_the_same_request() -> None:
    route = "PUT /jobs/{job_id}/photos/{slot}"
    lower = "01935f7e-0000-7000-8000-0000000000aa"
    a = fingerprint("PUT", route, {"job_id": lower, "slot": "before"}, {"photo_id": lower})
    b = fingerprint(
        "PUT", route, {"job_id": lower.upper(), "slot": "before"}, {"photo_id": lower.upper()}
    )
    assert a == b
    accept = "POST /jobs/{job_id}/accept"
    assert fingerprint("POST", accept, {}, {"version": 1.0}) == fingerprint(
        "POST", accept, {}, {"version": 1}
    )
    assert fingerprint("POST", accept, {}, {"version": 1.5}) != fingerprint(
        "POST", accept, {}, {"version": 1}
    )


def test_other_text_keeps_its_case() -> None:
    assign = "POST /jobs/{job_id}/assign"
    assert fingerprint("POST", assign, {}, {"worker_id": "Ab"}) != fingerprint(
        "POST", assign, {}, {"worker_id": "ab"}
    )
    slot = "PUT /jobs/{job_id}/photos/{slot}"
    assert fingerprint("PUT", slot, {"slot": "Before"}, {}) != fingerprint(
        "PUT", slot, {"slot": "before"}, {}
    )
