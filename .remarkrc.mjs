// `npm run docs:check`: every relative link and heading anchor in the Markdown files resolves.
import remarkValidateLinks from 'remark-validate-links'

export default { plugins: [[remarkValidateLinks, { repository: false }]] }
