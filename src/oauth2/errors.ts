import { AppError, oauthError } from '../http/errors.js'

/** RFC 6749 §5.2 errors, and the consent flow's own. */
export const invalidGrant = (description: string) => oauthError(400, 'invalid_grant', description)
export const invalidRequest = (description: string) => oauthError(400, 'invalid_request', description)
export const invalidScope = (description: string) => oauthError(400, 'invalid_scope', description)
/** `refused`: why the client's metadata document could not be used. */
export const invalidClient = (refused?: string) => oauthError(401, 'invalid_client', refused === undefined
  ? 'Unknown client: send the client_id of a registered client.'
  : `Unknown client: its client_id metadata document was refused: ${refused}.`)
/** RFC 8707 §2: the resource is malformed, or not the one the grant is bound to. */
export const invalidTarget = (description: string) => oauthError(400, 'invalid_target', description)
export const invalidClientMetadata = (description: string) => oauthError(400, 'invalid_client_metadata', description)

/** Token grants while login is off. */
export const grantsDisabled = () => oauthError(403, 'access_denied', 'Login is disabled on this service.', 'LOGIN_DISABLED')
/** The consent page while login is off. */
export const consentDisabled = () => new AppError(403, 'LOGIN_DISABLED', 'Login is disabled on this service.')

export const anotherSession = () =>
  new AppError(403, 'FORBIDDEN', 'This authorization request belongs to another sign-in: start it again from the client.')
