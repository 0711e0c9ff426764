// One spelling of an environment's name for every place that takes one (keys, TPS_ENVIRONMENT,
// operations' environments, the CLI's --env), so a name one of them accepts is never one another
// could not have created: such a name would select nothing and look like "no events".
export const ENVIRONMENT_NAME = /^[A-Za-z0-9_-]{1,64}$/;
export const ENVIRONMENT_NAME_RULE = '1–64 letters, digits, - and _';

export const isEnvironmentName = (name: string): boolean => ENVIRONMENT_NAME.test(name);
