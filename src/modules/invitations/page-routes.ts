import formBody from '@fastify/formbody'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { FormTokens } from '../auth/form-tokens.js'
import { acceptPageRoutes } from './accept-page-routes.js'
import { PageForms } from './page-forms.js'
import { teamPageRoutes } from './team-page-routes.js'

/** What the pages share with the other account pages: the trusted origins and the CSRF key. */
export interface InvitationPagesOptions {
  /** Origins a browser's form may come from (http/origins.ts). */
  origins: ReadonlySet<string>
  /** The key of the forms' CSRF tokens (shared with the other account pages). */
  formKey: Buffer
}

/** The invitation pages (accept, team invitations): HTML forms, in a context of their own that accepts form bodies. */
export const invitationPageRoutes: FastifyPluginAsyncTypebox<InvitationPagesOptions> = async (app, { origins, formKey }) => {
  await app.register(formBody)
  const tokens = new FormTokens(formKey, () => app.services.sessions.cookie)
  const forms = new PageForms(origins)
  await app.register(acceptPageRoutes, { forms, tokens })
  await app.register(teamPageRoutes, { forms, tokens })
}
