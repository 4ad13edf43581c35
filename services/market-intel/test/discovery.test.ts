import { z } from 'zod';
import {
  BriefResponse,
  GapsResponse,
  KeywordsResponse,
  PainClustersResponse,
  toJsonSchema,
  TrendsResponse,
} from '@repo/schemas';
import {
  ForgeRequest,
  JobAccepted,
  ProveRequest,
  KeywordsQuery,
  NetworkOnlyQuery,
  SectorLimitQuery,
  TrendsQuery,
} from '../src/schemas';
import { DISCOVERY } from '../src/entry-points/http/discovery';

// The discovery metadata of the paid routes is published in every 402 (docs/payments.md, "Discovery"): its
// schemas must be the ones the routes validate with and its examples must be answers they could give.
const ROUTES = [
  ['gaps', SectorLimitQuery, GapsResponse],
  ['painClusters', SectorLimitQuery, PainClustersResponse],
  ['trends', TrendsQuery, TrendsResponse],
  ['keywords', KeywordsQuery, KeywordsResponse],
  ['brief', NetworkOnlyQuery, BriefResponse],
  ['forge', ForgeRequest, JobAccepted],
  ['prove', ProveRequest, JobAccepted],
] as const satisfies readonly (readonly [keyof typeof DISCOVERY, z.ZodType, z.ZodType])[];

describe('discovery metadata of the paid routes', () => {
  it.each(ROUTES)(
    'When %s is described, then its input and output schemas are its route schemas and its examples parse with them',
    (name, input, output) => {
      const discovery = DISCOVERY[name];
      const inputSchema = 'query' in discovery ? discovery.query : discovery.body;
      expect(inputSchema).toEqual(toJsonSchema(input, 'input'));
      expect(discovery.output).toEqual(toJsonSchema(output));
      expect(input.safeParse(discovery.inputExample).success).toBe(true);
      expect(output.safeParse(discovery.outputExample).error).toBeUndefined();
    },
  );
});
