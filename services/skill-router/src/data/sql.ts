/**
 * SQL for an interval given in milliseconds by the statement's parameter `$n` (a number; fractions
 * of a millisecond are kept): `make_interval(secs => $n::double precision / 1000)`.
 * @param n the 1-based number of the parameter holding the milliseconds
 */
export const msInterval = (n: number): string => `make_interval(secs => ${'$'}${n}::double precision / 1000)`;
