export * from './settings.js'
export * from './accounts.js'
export * from './oauth.js'
export * from './catalogue.js'
