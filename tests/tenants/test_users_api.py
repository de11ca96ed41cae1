"""A tenant's users through HTTP: add by email, list, get, change role or name, remove; keys of
a user; every bad input a problem naming its field."""

from __future__ import annotations

import secrets
from typing import Any

from fastapi.testclient import TestClient

from support.api_fixtures import ApiTenant, ok


def _email(who: str = "user") -> str:
    # The directory is shared by every test's tenants (and kept): each email is new.
    return f"{who}-{secrets.token_hex(4)}@example.com"


def _add(client: TestClient, tenant: ApiTenant, role: str, **body: Any) -> dict[str, Any]:
    body = {"email": _email(role), "role": role, **body}
    return ok(client.post("/v1/users", json=body, headers=tenant.headers), 201)


def _key_of(client: TestClient, tenant: ApiTenant, user_id: str, **body: Any) -> dict[str, Any]:
    body = {"name": "personal", "user_id": user_id, **body}
    return ok(client.post("/v1/api-keys", json=body, headers=tenant.headers), 201)


def _bearer(created: dict[str, Any]) -> dict[str, str]:
    return {"Authorization": f"Bearer {created['key']}"}


def test_add_list_get_change_and_remove(client: TestClient, tenant_key_a: ApiTenant) -> None:
    h = tenant_key_a.headers
    email = _email("ada")
    ada = ok(
        client.post(
            "/v1/users",
            json={"email": email.upper(), "name": "Ada", "role": "admin"},
            headers=h,
        ),
        201,
    )
    assert ada["id"].startswith("usr_")
    assert (ada["email"], ada["name"], ada["role"], ada["scopes"]) == (email, "Ada", "admin", ["*"])
    bob = _add(client, tenant_key_a, "viewer", name="Bob")
    assert (bob["role"], bob["scopes"]) == ("viewer", ["read"])

    listed = ok(client.get("/v1/users", headers=h), 200)
    assert [u["id"] for u in listed["items"]] == sorted([ada["id"], bob["id"]])
    assert listed["next_cursor"] is None
    first = ok(client.get("/v1/users", params={"limit": 1}, headers=h), 200)
    rest = ok(client.get("/v1/users", params={"cursor": first["next_cursor"]}, headers=h), 200)
    assert [u["id"] for u in first["items"] + rest["items"]] == sorted([ada["id"], bob["id"]])
    assert ok(client.get(f"/v1/users/{bob['id']}", headers=h), 200) == bob

    changed = ok(client.patch(f"/v1/users/{bob['id']}", json={"role": "reviewer"}, headers=h), 200)
    assert (changed["role"], changed["name"], changed["scopes"]) == (
        "reviewer",
        "Bob",
        ["read", "review"],
    )
    # A name is the user's own: an admin's key cannot change it, the user's own key can.
    renamed = client.patch(f"/v1/users/{bob['id']}", json={"name": "Robert"}, headers=h)
    problem = ok(renamed, 403)
    assert (problem["code"], problem["errors"][0]["field"]) == ("name_not_yours", "name")
    assert ok(client.get(f"/v1/users/{bob['id']}", headers=h), 200)["name"] == "Bob"
    own = _bearer(_key_of(client, tenant_key_a, ada["id"]))
    mine = client.patch(f"/v1/users/{ada['id']}", json={"name": "Ada L."}, headers=own)
    assert ok(mine, 200)["name"] == "Ada L."
    assert ok(client.patch(f"/v1/users/{bob['id']}", json={"name": "R"}, headers=own), 403)
    by_email = ok(client.get("/v1/users", params={"email": bob["email"].upper()}, headers=h), 200)
    assert [u["id"] for u in by_email["items"]] == [bob["id"]] and by_email["next_cursor"] is None
    assert client.delete(f"/v1/users/{bob['id']}", headers=h).status_code == 204
    assert ok(client.get(f"/v1/users/{bob['id']}", headers=h), 404)["detail"] == "user not found"
    assert [u["id"] for u in ok(client.get("/v1/users", headers=h), 200)["items"]] == [ada["id"]]


def test_a_member_added_twice_is_409(client: TestClient, tenant_key_a: ApiTenant) -> None:
    user = _add(client, tenant_key_a, "viewer")
    again = client.post(
        "/v1/users", json={"email": user["email"], "role": "admin"}, headers=tenant_key_a.headers
    )
    problem = ok(again, 409)
    assert problem["code"] == "already_a_member"
    assert problem["errors"][0]["field"] == "email"


def test_a_user_of_another_tenant_is_invited_and_nothing_of_theirs_shows(
    client: TestClient, tenant_key_a: ApiTenant, tenant_key_b: ApiTenant
) -> None:
    in_a = _add(client, tenant_key_a, "admin", name="Kept")
    hb = tenant_key_b.headers
    body = {"email": in_a["email"].upper(), "name": "Ignored", "role": "viewer"}
    invited = ok(client.post("/v1/users", json=body, headers=hb), 201)
    assert invited["id"].startswith("inv_") and invited["status"] == "invited"
    assert set(invited) == {"id", "email", "role", "status", "invited_by", "created_at"}
    assert (invited["email"], invited["role"]) == (in_a["email"], "viewer")
    assert in_a["id"] not in str(invited) and "Kept" not in str(invited)
    # Not a member of B until they accept: B neither lists nor finds them, nor renames them.
    assert ok(client.get("/v1/users", headers=hb), 200)["items"] == []
    found = ok(client.get("/v1/users", params={"email": in_a["email"]}, headers=hb), 200)
    assert found["items"] == []
    assert ok(client.get(f"/v1/users/{in_a['id']}", headers=hb), 404)["detail"] == "user not found"
    rename = client.patch(f"/v1/users/{in_a['id']}", json={"name": "Taken"}, headers=hb)
    assert rename.status_code == 404
    a_view = ok(client.get(f"/v1/users/{in_a['id']}", headers=tenant_key_a.headers), 200)
    assert (a_view["name"], a_view["role"]) == ("Kept", "admin")
    again = ok(client.post("/v1/users", json=body, headers=hb), 409)
    assert (again["code"], again["errors"][0]["field"]) == ("already_invited", "email")
    listed = ok(client.get("/v1/users/invitations", headers=hb), 200)["items"]
    assert [i["id"] for i in listed] == [invited["id"]]
    assert ok(client.get("/v1/users/invitations", headers=tenant_key_a.headers), 200) == {
        "items": []
    }
    assert client.delete(f"/v1/users/invitations/{invited['id']}", headers=hb).status_code == 204
    assert ok(client.get("/v1/users/invitations", headers=hb), 200)["items"] == []
    assert client.delete(f"/v1/users/invitations/{invited['id']}", headers=hb).status_code == 404


def test_bad_input_is_a_problem_naming_the_field(
    client: TestClient, tenant_key_a: ApiTenant
) -> None:
    h = tenant_key_a.headers
    user = _add(client, tenant_key_a, "viewer")
    cases = [
        ("POST", "/v1/users", {"email": "not-an-email", "role": "viewer"}, "email"),
        ("POST", "/v1/users", {"email": _email(), "role": "owner"}, "role"),
        ("POST", "/v1/users", {"role": "viewer"}, "email"),
        ("POST", "/v1/users", {"email": _email(), "name": "x" * 201}, "name"),
        ("POST", "/v1/users", {"email": _email(), "admin": True}, "admin"),
        ("PATCH", f"/v1/users/{user['id']}", {"role": "member"}, "role"),
        ("GET", "/v1/users?limit=0", None, "limit"),
        ("GET", "/v1/users?email=not-an-email", None, "email"),
        ("GET", "/v1/users?cursor=nonsense", None, "cursor"),
    ]
    for method, url, body, field in cases:
        problem = ok(client.request(method, url, json=body, headers=h), 422)
        assert problem["type"] and problem["status"] == 422
        assert field in [e["field"] for e in problem["errors"]], (url, body, problem)
    nothing = ok(client.patch(f"/v1/users/{user['id']}", json={}, headers=h), 422)
    assert "role, name" in str(nothing)


def test_the_users_api_needs_the_admin_scope(client: TestClient, tenant_key_a: ApiTenant) -> None:
    body = {"name": "rw", "scopes": ["read", "write"]}
    writer = ok(client.post("/v1/api-keys", json=body, headers=tenant_key_a.headers), 201)
    headers = _bearer(writer)
    assert ok(client.get("/v1/users", headers=headers), 403)["code"] == "forbidden"
    denied = client.post("/v1/users", json={"email": _email()}, headers=headers)
    assert ok(denied, 403)["code"] == "forbidden"


def test_a_tenant_keeps_an_admin(client: TestClient, tenant_key_a: ApiTenant) -> None:
    h = tenant_key_a.headers
    admin = _add(client, tenant_key_a, "admin")
    demoted = ok(client.patch(f"/v1/users/{admin['id']}", json={"role": "viewer"}, headers=h), 409)
    assert (demoted["code"], demoted["errors"][0]["field"]) == ("last_admin", "role")
    removed = ok(client.delete(f"/v1/users/{admin['id']}", headers=h), 409)
    assert (removed["code"], removed["errors"]) == ("last_admin", [])
    assert ok(client.get(f"/v1/users/{admin['id']}", headers=h), 200)["role"] == "admin"
    other = _add(client, tenant_key_a, "admin")
    assert client.delete(f"/v1/users/{admin['id']}", headers=h).status_code == 204
    assert ok(client.get(f"/v1/users/{other['id']}", headers=h), 200)["role"] == "admin"


def test_keys_of_a_user(client: TestClient, tenant_key_a: ApiTenant) -> None:
    h = tenant_key_a.headers
    reviewer = _add(client, tenant_key_a, "reviewer")
    # Default scopes: the caller's ("*") narrowed to what the role grants.
    key = _key_of(client, tenant_key_a, reviewer["id"])
    assert (key["user_id"], key["scopes"]) == (reviewer["id"], ["read", "review"])
    listed = ok(client.get("/v1/api-keys", headers=h), 200)["items"]
    assert {k["id"]: k["user_id"] for k in listed}[key["id"]] == reviewer["id"]
    assert {k["id"]: k["user_id"] for k in listed}[tenant_key_a.key_id] is None

    beyond = client.post(
        "/v1/api-keys",
        json={"name": "x", "user_id": reviewer["id"], "scopes": ["write"]},
        headers=h,
    )
    assert ok(beyond, 422)["errors"][0]["field"] == "scopes"
    for user_id in ("usr_00000000000000000000000000", "nonsense"):
        missing = client.post("/v1/api-keys", json={"name": "x", "user_id": user_id}, headers=h)
        problem = ok(missing, 404)
        assert (problem["detail"], problem["errors"][0]["field"]) == ("user not found", "user_id")


def test_a_users_key_follows_their_role_and_membership(
    client: TestClient, tenant_key_a: ApiTenant
) -> None:
    h = tenant_key_a.headers
    _add(client, tenant_key_a, "admin")  # the tenant keeps an admin when this one steps down
    member = _add(client, tenant_key_a, "admin")
    own = _bearer(_key_of(client, tenant_key_a, member["id"]))
    assert client.post("/v1/projects", json={"name": "by admin"}, headers=own).status_code == 201
    ok(client.patch(f"/v1/users/{member['id']}", json={"role": "viewer"}, headers=h), 200)
    # Narrowed at once: reads still work, changes no longer.
    assert client.get("/v1/projects", headers=own).status_code == 200
    denied = client.post("/v1/projects", json={"name": "by viewer"}, headers=own)
    assert "'write'" in ok(denied, 403)["detail"]
    assert client.delete(f"/v1/users/{member['id']}", headers=h).status_code == 204
    assert ok(client.get("/v1/projects", headers=own), 401)["detail"] == "API key revoked"


def test_a_replayed_add_answers_the_same_user(client: TestClient, tenant_key_a: ApiTenant) -> None:
    headers = {**tenant_key_a.headers, "Idempotency-Key": "add-user"}
    body = {"email": _email("once"), "role": "reviewer"}
    first = client.post("/v1/users", json=body, headers=headers)
    again = client.post("/v1/users", json=body, headers=headers)
    assert ok(again, 201) == ok(first, 201)
    assert again.headers.get("Idempotency-Replayed") == "true"
    user_id = first.json()["id"]
    assert client.delete(f"/v1/users/{user_id}", headers=tenant_key_a.headers).status_code == 204
    gone = client.post("/v1/users", json=body, headers=headers)
    assert ok(gone, 409)["code"] == "idempotent_object_deleted"
