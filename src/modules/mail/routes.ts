import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { policy } from '../../auth/policies.js'
import { TestEmailBody, TestEmailSent } from './schemas.js'
import { testMail } from './templates.js'

/** The administrator's check of the SMTP settings. */
export const mailRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/api/admin/email/test', {
    config: { auth: policy.session({ permission: 'email.test' }) },
    schema: {
      tags: ['Admin'],
      summary: 'Send a test email now and report the SMTP outcome',
      description:
        'Sends the test mail at once over the current SMTP settings, also while `global.send_mail` is off, so that ' +
        'an administrator can check the server before switching sending on. 400 `SMTP_NOT_CONFIGURED` while ' +
        '`smtp.host` or `smtp.from_email` is empty, or while `smtp.password` cannot be decrypted (`readable: false`). 502 `SMTP_ERROR` when the mail does not go out: `error` carries ' +
        "the SMTP server's own reply (e.g. `535 …` for refused credentials, `550 …` for a refused recipient), or the " +
        'connection or TLS failure. Connecting and the greeting time out after 10 s, an idle connection after 30 s.',
      body: TestEmailBody,
      response: { 200: TestEmailSent },
    },
  }, async (request) => {
    const sent = await app.services.mail.send({ to: request.body.email, ...testMail() })
    return {
      success: true as const,
      message: 'Test email sent.',
      data: { accepted: sent.accepted, message_id: sent.messageId },
    }
  })
}
