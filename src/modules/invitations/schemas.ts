import { Type } from 'typebox'
import { Nullable, Ok, OkMessage, Pagination, PaginationQuery } from '../../http/envelope.js'
import { TeamView } from '../teams/schemas.js'

const closed = { additionalProperties: false } as const
const Timestamp = Type.String({ format: 'date-time' })
const TeamRole = Type.Union([Type.Literal('team_admin'), Type.Literal('team_user')])
const statusOf = (description?: string) =>
  Type.Union([Type.Literal('pending'), Type.Literal('accepted'), Type.Literal('revoked'), Type.Literal('expired')], description === undefined ? {} : { description })
const Status = statusOf()

/** A done deed (revoked). */
export const Done = OkMessage

/** The team routes' path: `:teamId` is what the route policy checks membership on. */
export const TeamParams = Type.Object({ teamId: Type.String({ maxLength: 100 }) }, closed)
/** An invitation of a team: an id of another team's invitation is not found. */
export const InvitationParams = Type.Object({ teamId: Type.String({ maxLength: 100 }), id: Type.String({ maxLength: 100 }) }, closed)
/** A link's token, in the path as the link carries it. */
export const TokenParams = Type.Object({ token: Type.String({ minLength: 1, maxLength: 200, description: 'The token of the invitation link.' }) }, closed)

/** Who to invite, and as what. */
export const CreateInvitationBody = Type.Object({
  email: Type.String({ format: 'email', maxLength: 255, description: 'The address to invite; stored and compared in lower case.' }),
  role: TeamRole,
}, closed)

/** A page of a team's invitations, pending ones unless `status` says otherwise. */
export const InvitationsQuery = Type.Object({
  ...PaginationQuery,
  status: Type.Optional(Type.Union([Status, Type.Literal('all')], { description: 'Which invitations: `pending` (the default), `accepted`, `revoked`, `expired`, or `all`.' })),
}, closed)

/** An invitation as a team's admins see it: never the token. */
export const InvitationView = Type.Object({
  id: Type.String(),
  team_id: Type.String(),
  email: Type.String(),
  role: TeamRole,
  status: statusOf('`accepted`, else `revoked`, else `expired` past `expires_at`, else `pending`.'),
  invited_by: Type.Object({ id: Type.String(), username: Type.String() }),
  created_at: Timestamp,
  expires_at: Timestamp,
  accepted_at: Nullable(Type.String({ format: 'date-time' })),
  revoked_at: Nullable(Type.String({ format: 'date-time' })),
})

/** The creating answer: the one that shows the link. */
export const CreatedEnvelope = Ok(Type.Object({
  invitation: InvitationView,
  accept_url: Type.String({ description: 'The link to accept, carrying the token: shown in this answer only.' }),
  mail_sent: Type.Boolean({ description: 'Whether the invitation mail went out (mail sending on, SMTP configured, the server accepted it).' }),
}))

/** A team's invitations, paginated. */
export const InvitationsEnvelope = Ok(Type.Object({ invitations: Type.Array(InvitationView), pagination: Pagination }))

/** What the holder of a link sees before accepting. */
export const PublicInvitationEnvelope = Ok(Type.Object({
  team: Type.Object({ id: Type.String(), name: Type.String() }),
  inviter: Type.Object({ username: Type.String() }),
  email: Type.String({ description: 'The invited address: only an account whose verified address this is may accept.' }),
  role: TeamRole,
  expires_at: Timestamp,
}))

/** The team just joined, as its new member sees it. */
export const AcceptedEnvelope = Ok(Type.Object({ team: TeamView }))
