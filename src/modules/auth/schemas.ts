import { Type } from 'typebox'
import { Ok, OkMessage } from '../../http/envelope.js'
import { Email, Password, PersonName, Username, UserView } from '../users/schemas.js'

const closed = { additionalProperties: false } as const

export const RegisterBody = Type.Object({
  username: Username,
  email: Email,
  password: Password,
  first_name: Type.Optional(PersonName),
  last_name: Type.Optional(PersonName),
  invitation_token: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'The token of a team invitation (from its link). When the invitation is pending and for this very address, the address counts as verified (no verification mail); any other token changes nothing. It does not join the team: accept the invitation afterwards.' })),
}, closed)

export const LoginBody = Type.Object({
  login: Type.String({ minLength: 1, maxLength: 255, description: 'Email or username.' }),
  password: Type.String({ minLength: 1, maxLength: 128 }),
}, closed)

export const EmailBody = Type.Object({ email: Email }, closed)

export const TokenQuery = Type.Object({ token: Type.String({ minLength: 1, maxLength: 200 }) }, closed)

export const ResetBody = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 200 }),
  new_password: Password,
  new_password_confirm: Type.Optional(Type.String({ maxLength: 128, description: 'When sent, must equal `new_password` (the reset page asks twice).' })),
  csrf_token: Type.Optional(Type.String({ maxLength: 128, description: 'Required with a form-encoded body (the reset page): the value the page gave. JSON callers leave it out.' })),
}, closed)

export const ResetLinkState = Ok(Type.Object({
  expires_at: Type.String({ format: 'date-time', description: 'Until when the link can be used.' }),
}))

export const ChangePasswordBody = Type.Object({
  current_password: Type.String({ minLength: 1, maxLength: 128 }),
  new_password: Password,
}, closed)

export const ProfileBody = Type.Object({
  username: Type.Optional(Username),
  first_name: Type.Optional(PersonName),
  last_name: Type.Optional(PersonName),
}, { ...closed, minProperties: 1 })

export const UserEnvelope = Ok(Type.Object({ user: UserView }))
export const Message = OkMessage
