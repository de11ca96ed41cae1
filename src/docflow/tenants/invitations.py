"""Adding a user of the directory to a tenant with their consent: invitations.

The directory is shared by every tenant, so a tenant admin adding an email that is new makes
the user and their membership at once (nobody else knows them), but adding an email the
directory knows already only invites that user: no membership, nothing of theirs shown (the
admin sees the email they typed, the role and "invited"; never the user's name nor their other
tenants), until the user accepts the invitation in the console (`accept`), or declines it. An
admin may cancel a pending invitation. A tenant learns one thing by it: that the email is known
to the installation (an invitation rather than a member); that is the price of never making a
user a member of a tenant they did not choose.

The operator (`docflow users create`) adds a known user directly: the operator runs the
installation and acts for its users.

Logged `membership.invited`, `membership.invitation_accepted`, `membership.invitation_declined`,
`membership.invitation_cancelled`.
"""

from __future__ import annotations

import structlog
from sqlalchemy.orm import Session

from docflow.db import bind_tenant
from docflow.errors import Conflict, NotFound, get_one
from docflow.kit import ids
from docflow.tenants.models import Invitation, Membership
from docflow.tenants.repository import (
    InvitationRepository,
    MembershipRepository,
    PendingInvitation,
    find_invitations_of_user,
    find_user,
)
from docflow.tenants.service import (
    AlreadyAMember,
    _check_role,
    _normalise_email,
    add_member,
    get_tenant,
    invite_user,
)

log = structlog.get_logger(__name__)


class AlreadyInvited(Conflict):
    """The user has a pending invitation to this tenant already."""

    code = "already_invited"


def add_by_email(
    session: Session, tenant_id: str, *, email: str, role: str, actor: str, name: str = ""
) -> Membership | Invitation:
    """What a tenant admin's "add a user" does: a new email joins the directory and the tenant
    (with `name`); a known one gets an `Invitation` to accept. AlreadyAMember or AlreadyInvited
    (409, naming `email`) when they are a member or invited already."""
    address = _normalise_email(email)
    _check_role(role)
    get_tenant(session, tenant_id)
    found = find_user(session, email=address)
    if found is None:
        return invite_user(session, tenant_id, email=address, role=role, name=name)
    if MembershipRepository(session, tenant_id).get(found.id) is not None:
        raise AlreadyAMember("a user with this email is already a member", field="email")
    if InvitationRepository(session, tenant_id).of_user(found.id) is not None:
        raise AlreadyInvited("this email is invited already", field="email")
    invitation = Invitation(
        tenant_id=tenant_id,
        id=ids.new_id(ids.INVITATION),
        user_id=found.id,
        email=address,
        role=role,
        invited_by=actor,
    )
    session.add(invitation)
    session.flush()
    log.info("membership.invited", tenant_id=tenant_id, invitation_id=invitation.id, role=role)
    return invitation


def list_invitations(session: Session, tenant_id: str) -> list[Invitation]:
    """The tenant's pending invitations, oldest first."""
    return InvitationRepository(session, tenant_id).list()


def get_invitation(session: Session, tenant_id: str, *, invitation_id: str) -> Invitation:
    """One of the tenant's pending invitations; NotFound ("invitation") otherwise."""
    return get_one(InvitationRepository(session, tenant_id).get(invitation_id), "invitation")


def cancel(session: Session, tenant_id: str, *, invitation_id: str) -> None:
    """Withdraw a pending invitation (NotFound when it is not the tenant's, or gone)."""
    session.delete(get_invitation(session, tenant_id, invitation_id=invitation_id))
    session.flush()
    log.info("membership.invitation_cancelled", tenant_id=tenant_id, invitation_id=invitation_id)


def pending_for(session: Session, *, user_id: str) -> list[PendingInvitation]:
    """The invitations waiting for the user (this crosses tenants by design: the user sees
    which tenants invite them, by name)."""
    return find_invitations_of_user(session, user_id)


def _own(session: Session, *, user_id: str, invitation_id: str) -> Invitation:
    """The user's own pending invitation, read under its tenant (`session` is bound to it);
    NotFound ("invitation") for any other."""
    mine = next((i for i in pending_for(session, user_id=user_id) if i.id == invitation_id), None)
    if mine is None:
        raise NotFound("invitation not found")
    bind_tenant(session, mine.tenant_id)
    return get_invitation(session, mine.tenant_id, invitation_id=invitation_id)


def accept(session: Session, *, user_id: str, invitation_id: str) -> Membership:
    """The user accepts their invitation: they become a member with its role (`session` is
    bound to the tenant from then on)."""
    invitation = _own(session, user_id=user_id, invitation_id=invitation_id)
    tenant_id, role = invitation.tenant_id, invitation.role
    session.delete(invitation)
    session.flush()
    member = MembershipRepository(session, tenant_id).get(user_id)
    if member is None:  # an operator may have added them meanwhile
        member = add_member(session, tenant_id, user_id=user_id, role=role)
    log.info("membership.invitation_accepted", tenant_id=tenant_id, invitation_id=invitation_id)
    return member


def decline(session: Session, *, user_id: str, invitation_id: str) -> None:
    """The user declines their invitation: it is gone, nothing else changes."""
    invitation = _own(session, user_id=user_id, invitation_id=invitation_id)
    tenant_id = invitation.tenant_id
    session.delete(invitation)
    session.flush()
    log.info("membership.invitation_declined", tenant_id=tenant_id, invitation_id=invitation_id)
