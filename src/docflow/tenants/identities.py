"""Console sign-in through an OpenID Connect issuer: which docflow user a verified identity is.

The issuer's id token has been checked by the caller (`docflow.web.oidc`: signature, `iss`,
`aud`, `exp`, `nonce`). Here the identity (`iss`, `sub`) is matched to a user of the directory:

1. the user bound to that identity, whatever email the issuer sends now (an email changed at
   the issuer does not move the identity to another user);
2. otherwise, at the identity's first sign-in, the user whose email is the one the issuer sent,
   only when the issuer says it verified it (`email_verified` true): the identity is then bound
   to that user for good. A user bound to another subject of the same issuer is refused (one
   user, one identity per issuer); a binding to an issuer no longer configured is replaced.

Emails are unique in the directory, so one identity is at most one user; a user belonging to
several tenants chooses one after signing in, as with a password. Every refusal is a
`SignInRefused` (403) saying why, logged `user.sign_in_refused` with `method="oidc"`; a
sign-in is logged `user.signed_in` with `method="oidc"`, a binding `user.oidc_bound`.

A binding is released by an admin of any tenant the user belongs to (the console's users page)
or by the operator (`docflow users release-sign-in`): the binding is the user's, not a
membership's, as a console password is, and releasing it grants nobody anything, since the next
sign-in binds afresh only the identity whose verified email is the user's. It is logged
`user.oidc_released` naming the actor.
"""

from __future__ import annotations

import structlog
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from docflow.errors import Conflict, Forbidden, InvalidInput
from docflow.tenants.models import User
from docflow.tenants.repository import (
    bind_oidc_subject,
    find_memberships_of_user,
    find_oidc_candidates,
)
from docflow.tenants.service import _normalise_email, get_member

log = structlog.get_logger(__name__)


class SignInRefused(Forbidden):
    """The identity the issuer vouched for may not sign in to docflow (the message says why)."""

    code = "sign_in_refused"


class NotBound(Conflict):
    """The user is bound to no OpenID Connect identity: there is no binding to release."""

    code = "no_oidc_binding"


def _refuse(reason: str, message: str, **fields: str) -> SignInRefused:
    log.info("user.sign_in_refused", method="oidc", reason=reason, **fields)
    return SignInRefused(message)


def sign_in_oidc(
    session: Session, *, issuer: str, subject: str, email: str | None, email_verified: bool
) -> str:
    """The id of the user this identity is (binding it at its first sign-in, which the caller
    commits); `SignInRefused` when it is none, or may not be bound (see the module docstring)."""
    try:
        address = _normalise_email(email) if email else ""
    except InvalidInput:
        address = ""
    candidates = find_oidc_candidates(
        session, issuer=issuer, subject=subject, email=address or "\x00"
    )
    bound = next((c for c in candidates if (c.issuer, c.subject) == (issuer, subject)), None)
    if bound is not None:
        log.info("user.signed_in", method="oidc", user_id=bound.user_id)
        return bound.user_id
    if not address:
        raise _refuse(
            "no_email",
            "the issuer sent no usable email for you, and your identity is bound to no docflow "
            "user: ask your identity provider's administrator to release the email claim",
            subject=subject,
        )
    if not email_verified:
        raise _refuse(
            "email_not_verified",
            f"the issuer has not verified your email {address}: verify it there, then sign in "
            "again",
            subject=subject,
        )
    user = candidates[0] if candidates else None
    if user is None:
        raise _refuse(
            "no_user",
            f"no docflow user has the email {address}: ask an admin of your tenant to invite you",
            subject=subject,
        )
    if user.issuer == issuer and user.subject is not None:
        raise _refuse(
            "bound_to_another",
            f"the docflow user {address} signs in with another account of this issuer: use "
            "that one, or ask an admin of your tenant to release that binding (the console's "
            "Users page, or `docflow users release-sign-in`), then sign in again",
            subject=subject,
            user_id=user.user_id,
        )
    tenants = find_memberships_of_user(session, user.user_id)
    if not tenants:
        raise _refuse(
            "no_tenant",
            f"{address} is a member of no tenant: ask an admin of your tenant to invite you",
            user_id=user.user_id,
        )
    try:
        with session.begin_nested():
            done = bind_oidc_subject(
                session, tenants[0][0], user_id=user.user_id, issuer=issuer, subject=subject
            )
    except IntegrityError:  # the same identity bound by a sign-in running alongside
        done = False
    if not done:
        raise _refuse(
            "bind_raced",
            "another sign-in changed your account at the same moment: sign in again",
            user_id=user.user_id,
        )
    log.info("user.oidc_bound", user_id=user.user_id, issuer=issuer, subject=subject)
    log.info("user.signed_in", method="oidc", user_id=user.user_id)
    return user.user_id


def release_oidc(session: Session, tenant_id: str, *, user_id: str, actor: str) -> str:
    """Release the identity bound to a member of `tenant_id` (for every tenant they belong to),
    so that their next sign-in through the issuer binds afresh, as a first one; the issuer it
    was bound to. NotFound ("user not found") when they are no member of `tenant_id`, NotBound
    when no identity is bound to them."""
    user = get_member(session, tenant_id, user_id=user_id).user
    issuer, subject = user.oidc_issuer, user.oidc_subject
    if issuer is None or subject is None:
        raise NotBound("the user signs in through no OpenID Connect issuer: nothing to release")
    user.oidc_issuer = user.oidc_subject = None
    user.session_epoch = User.session_epoch + 1  # ends its sessions
    session.flush()
    log.info(
        "user.oidc_released",
        tenant_id=tenant_id,
        user_id=user_id,
        issuer=issuer,
        subject=subject,
        actor=actor,
    )
    return issuer
