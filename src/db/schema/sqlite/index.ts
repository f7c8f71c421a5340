export * from './settings.js'
