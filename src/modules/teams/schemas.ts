import { Type } from 'typebox'
import { Ok, OkMessage } from '../../http/envelope.js'

const closed = { additionalProperties: false } as const
const TeamRole = Type.Union([Type.Literal('team_admin'), Type.Literal('team_user')])

export const TeamView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  slug: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  owner_id: Type.String(),
  is_default: Type.Boolean(),
  member_count: Type.Integer(),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
  role: Type.Union([TeamRole, Type.Null()], { description: "The caller's role; null for a global admin who is not a member." }),
  is_owner: Type.Boolean(),
})

export const TeamEnvelope = Ok(Type.Object({ team: TeamView }))
export const TeamsEnvelope = Ok(Type.Object({ teams: Type.Array(TeamView) }))

export const MembersEnvelope = Ok(Type.Object({
  members: Type.Array(Type.Object({
    user_id: Type.String(),
    username: Type.String(),
    email: Type.Union([Type.String(), Type.Null()], {
      description: "Shown to the member themself and to holders of users.view (global admins); null for everyone else. The add answer also shows the address the caller typed as `login`.",
    }),
    role: TeamRole,
    is_owner: Type.Boolean(),
    joined_at: Type.String({ format: 'date-time' }),
  })),
}))

export const Done = OkMessage

export const TeamParams = Type.Object({ id: Type.String({ maxLength: 100 }) }, closed)
export const MemberParams = Type.Object({ id: Type.String({ maxLength: 100 }), userId: Type.String({ maxLength: 100 }) }, closed)

const Name = Type.String({ minLength: 1, maxLength: 100, pattern: '\\S' })
const Description = Type.String({ maxLength: 500 })

export const CreateTeamBody = Type.Object({ name: Name, description: Type.Optional(Description) }, closed)
export const UpdateTeamBody = Type.Object({ name: Type.Optional(Name), description: Type.Optional(Type.Union([Description, Type.Null()])) }, { ...closed, minProperties: 1 })
export const AddMemberBody = Type.Object({ login: Type.String({ minLength: 1, maxLength: 255, description: 'Email or username of an existing user.' }), role: TeamRole }, closed)
export const RoleBody = Type.Object({ role: TeamRole }, closed)
export const OwnerBody = Type.Object({ user_id: Type.String({ minLength: 1, maxLength: 100 }) }, closed)
