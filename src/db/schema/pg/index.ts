export * from './settings.js'
export * from './accounts.js'
