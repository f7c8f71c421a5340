import { Type } from 'typebox'
import { Ok } from '../../http/envelope.js'

export const TestEmailBody = Type.Object(
  { email: Type.String({ format: 'email', maxLength: 255, description: 'Where to send the test mail.' }) },
  { additionalProperties: false },
)

export const TestEmailSent = Ok(
  Type.Object({
    accepted: Type.Array(Type.String(), { description: 'Recipients the SMTP server accepted.' }),
    message_id: Type.String({ description: 'Message-ID header of the mail sent.' }),
  }),
)
