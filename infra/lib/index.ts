// @longrun/cdk: longrun as a construct (`LongrunService`) to put in any stack, the stack the
// repository's CDK app deploys (`LongrunStack`), and where the functions' code comes from
// (`FunctionAssets`).
export * from './longrun-stack';
export { ConsoleSite, type ConsoleConfig, type ConsoleSiteProps } from './console';
