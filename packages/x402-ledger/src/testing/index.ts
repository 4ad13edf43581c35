// @repo/x402-ledger/testing — a real PostgreSQL ledger for tests: the database, a `pg` SQL client and
// factories for claims, verified payments and stored answers.
export { PgSqlClient, TEST_DATABASE_URL } from './pg-sql-client';
export { prepareTestDatabase } from './database';
export { buildClaimRequest, buildVerifiedPayment, buildStoredResponse } from './factories';
