"""`docflow users`: add, list, change the role of and remove a tenant's users, set their
console passwords and release their OpenID Connect sign-in (the operator acts for the tenant it
names, like the API's admin scope);
`docflow tenants list|show|suspend|resume`: the directory and a tenant's status
(`tenants.status`)."""

from __future__ import annotations

import sys

import typer
from rich.console import Console
from rich.markup import escape
from sqlalchemy.orm import Session

from docflow.cli_operator import fail, open_operator
from docflow.client.output import JsonOption, Output, OutputOption, chosen, print_object, print_rows
from docflow.errors import InvalidInput
from docflow.tenants import identities, passwords, service
from docflow.tenants import status as tenant_status
from docflow.tenants.schemas import TenantRead, TenantShown, UserRead

app = typer.Typer(
    help="Add, list, change the role of and remove a tenant's users.", no_args_is_help=True
)

TenantOption = typer.Option(..., "--tenant", help="tenant id (ten_...)")
UserArgument = typer.Argument(..., help="the user's id (usr_...) or email")
ByOption = typer.Option("operator", "--by", help="who acts (recorded in the audit)")
ROLES_HELP = "admin, reviewer or viewer"


def _out() -> Console:
    return Console(soft_wrap=True)


@app.command("create")
def create_user(
    email: str = typer.Argument(..., help="the user's email"),
    tenant: str = TenantOption,
    role: str = typer.Option("viewer", "--role", help=ROLES_HELP),
    name: str = typer.Option("", "--name", help="the user's name (for a new user)"),
    password_stdin: bool = typer.Option(
        False, "--password-stdin", help="read a console password from the first line of stdin"
    ),
) -> None:
    """Add a user to a tenant by email, adding them to the directory if the email is new."""
    password = _read_password() if password_stdin else None
    with open_operator() as operator, operator.transaction(tenant) as session:
        member = service.invite_user(session, tenant, email=email, name=name, role=role)
        user_id, stored_email = member.user_id, member.user.email
        if password is not None:
            passwords.set_password(session, tenant, user_id=user_id, password=password)
    _out().print(f"user [bold]{user_id}[/bold] ({escape(stored_email)}) is {role}")


def _read_password() -> str:
    """The first line of stdin, or a hidden prompt (asked twice) on a terminal; the command
    ends when it cannot be a password."""
    if sys.stdin.isatty():
        value: str = typer.prompt("password", hide_input=True, confirmation_prompt=True)
    else:
        value = sys.stdin.readline().rstrip("\r\n")
    try:
        return passwords.check_password(value)
    except InvalidInput as exc:
        raise fail(exc.detail) from exc


def _user_id(session: Session, tenant: str, user: str) -> str:
    """The id of the member of `tenant` that `user` names: their id, or their email (NotFound
    when no member of the tenant has it)."""
    if "@" not in user:
        return user
    return service.get_member_by_email(session, tenant, email=user).user_id


@app.command("set-password")
def set_password(user: str = UserArgument, tenant: str = TenantOption) -> None:
    """Set a member's console password (for every tenant they belong to), read from stdin's
    first line, or asked for on a terminal."""
    password = _read_password()
    with open_operator() as operator, operator.transaction(tenant) as session:
        user_id = _user_id(session, tenant, user)
        passwords.set_password(session, tenant, user_id=user_id, password=password)
    _out().print(f"user {user_id} has a new console password")


@app.command("release-sign-in")
def release_sign_in(
    user: str = UserArgument, tenant: str = TenantOption, by: str = ByOption
) -> None:
    """Release the OpenID Connect identity a member signs in with (for every tenant they belong
    to): their next sign-in through the issuer binds afresh by verified email (operator: the
    local database)."""
    with open_operator() as operator, operator.transaction(tenant) as session:
        user_id = _user_id(session, tenant, user)
        issuer = identities.release_oidc(session, tenant, user_id=user_id, actor=by)
    _out().print(
        f"user {user_id} no longer signs in with the identity of {escape(issuer)} they had: "
        "their next sign-in there binds afresh by verified email"
    )


USER_COLUMNS = ("id", "email", "name", "role")


@app.command("list")
def list_users(
    tenant: str = TenantOption, output: Output = OutputOption, as_json: bool = JsonOption
) -> None:
    """List a tenant's users and their roles."""
    users: list[UserRead] = []
    with open_operator() as operator, operator.transaction(tenant) as session:
        cursor: str | None = None
        while True:
            page = service.list_members(session, tenant, cursor=cursor, limit=200)
            users.extend(
                UserRead.of(member, service.ROLE_SCOPES.get(member.role, ()))
                for member in page.items
            )
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
    rows = [[u.id, u.email, u.name, u.role] for u in users]
    data = [u.model_dump(mode="json") for u in users]
    print_rows(chosen(output, as_json), USER_COLUMNS, rows, data)


@app.command("show")
def show_user(
    user: str = UserArgument,
    tenant: str = TenantOption,
    output: Output = OutputOption,
    as_json: bool = JsonOption,
) -> None:
    """Show a member of a tenant, found by id or email: their name and role there."""
    with open_operator() as operator, operator.transaction(tenant) as session:
        member = service.get_member(session, tenant, user_id=_user_id(session, tenant, user))
        shown = UserRead.of(member, service.ROLE_SCOPES.get(member.role, ()))
    data = shown.model_dump(mode="json")
    print_object(chosen(output, as_json), list(data.items()), data)


@app.command("role")
def change_role(
    user: str = UserArgument,
    role: str = typer.Argument(..., help=ROLES_HELP),
    tenant: str = TenantOption,
) -> None:
    """Change a user's role in a tenant; a lower role narrows their keys at once."""
    with open_operator() as operator, operator.transaction(tenant) as session:
        user_id = _user_id(session, tenant, user)
        service.update_member(session, tenant, user_id=user_id, role=role)
    _out().print(f"user {user_id} is {role}")


@app.command("rename")
def rename_user(
    user: str = UserArgument,
    name: str = typer.Argument(..., help="the user's name (shown in every tenant)"),
    tenant: str = TenantOption,
) -> None:
    """Set a user's name in the directory, for every tenant they belong to (a tenant's admin
    cannot: only the user, or the operator)."""
    with open_operator() as operator, operator.transaction(tenant) as session:
        user_id = _user_id(session, tenant, user)
        service.rename_user(session, tenant, user_id=user_id, name=name)
    _out().print(f"user {user_id} is named {escape(name.strip()[:200])}")


@app.command("remove")
def remove_user(user: str = UserArgument, tenant: str = TenantOption) -> None:
    """Remove a user from a tenant and revoke their keys there."""
    with open_operator() as operator, operator.transaction(tenant) as session:
        user_id = _user_id(session, tenant, user)
        revoked = service.remove_member(session, tenant, user_id=user_id)
    _out().print(f"removed {user_id}; revoked {len(revoked)} API key(s)")


# --- the directory: `docflow tenants list|show|suspend|resume` (mounted by docflow.cli) --------

TENANT_COLUMNS = ("id", "name", "plan", "status", "created_at", "suspended_at", "suspend_reason")


def _row(tenant: TenantRead) -> list[object]:
    shown = tenant.model_dump(mode="json")
    return [shown[column] for column in TENANT_COLUMNS]


def list_tenants(
    status: str | None = typer.Option(None, "--status", help="only active or suspended ones"),
    output: Output = OutputOption,
    as_json: bool = JsonOption,
) -> None:
    """List every tenant with its plan and status (operator: the local database)."""
    with open_operator() as operator, operator.transaction() as session:
        tenants = [
            TenantRead.model_validate(t) for t in tenant_status.list_tenants(session, status=status)
        ]
    data = [t.model_dump(mode="json") for t in tenants]
    print_rows(chosen(output, as_json), TENANT_COLUMNS, [_row(t) for t in tenants], data)


def show_tenant(
    tenant: str = typer.Argument(..., help="tenant id (ten_...)"),
    output: Output = OutputOption,
    as_json: bool = JsonOption,
) -> None:
    """Show a tenant: plan, status (who suspended it, when and why) and its active API keys."""
    with open_operator() as operator, operator.transaction(tenant) as session:
        found = tenant_status.get_tenant(session, tenant)
        shown = TenantShown(
            **TenantRead.model_validate(found).model_dump(),
            active_api_keys=tenant_status.active_key_count(session, tenant),
        )
    data = shown.model_dump(mode="json")
    print_object(chosen(output, as_json), list(data.items()), data)


def suspend_tenant(
    tenant: str = typer.Argument(..., help="tenant id (ten_...)"),
    reason: str = typer.Option(..., "--reason", help="why (kept on the tenant and logged)"),
    by: str = ByOption,
) -> None:
    """Suspend a tenant: its API keys answer 403 tenant_suspended and its uploads are refused;
    batches already running finish (operator: the local database)."""
    with open_operator() as operator, operator.transaction(tenant) as session:
        found = tenant_status.suspend_tenant(session, tenant, actor=by, reason=reason)
        since, who = found.suspended_at, found.suspended_by
    _out().print(f"tenant {tenant} is suspended (since {since:%Y-%m-%d %H:%M:%S} UTC, by {who})")


def resume_tenant(
    tenant: str = typer.Argument(..., help="tenant id (ten_...)"), by: str = ByOption
) -> None:
    """Resume a suspended tenant: its API keys and uploads work again (operator)."""
    with open_operator() as operator, operator.transaction(tenant) as session:
        tenant_status.resume_tenant(session, tenant, actor=by)
    _out().print(f"tenant {tenant} is active")


def register_directory(tenants_app: typer.Typer) -> None:
    """Add list, show, suspend and resume to `docflow tenants`."""
    tenants_app.command("list")(list_tenants)
    tenants_app.command("show")(show_tenant)
    tenants_app.command("suspend")(suspend_tenant)
    tenants_app.command("resume")(resume_tenant)
