import {
  LlmConfigError,
  LlmOutputError,
  LlmRequestError,
  LlmUnavailableError,
  SearchConfigError,
  SearchUnavailableError,
} from '@repo/llm';
import { failureCode } from '../../src/entry-points/consumers/step-worker';

// A failed job shows a stable code, never the upstream's text (README, "Security").
describe('failureCode', () => {
  it.each([
    [new LlmUnavailableError('connect ECONNREFUSED 10.0.0.5:443'), 'llm_unavailable'],
    [new LlmConfigError('401 invalid key sk-…'), 'llm_config'],
    [new LlmRequestError('400 context too long'), 'llm_request'],
    [new LlmOutputError('prove_vote_analyst', ['missing field score'], 2), 'llm_output'],
    [new SearchUnavailableError('timeout'), 'search_unavailable'],
    [new SearchConfigError('403'), 'search_config'],
    [new TypeError('x is undefined'), 'internal'],
  ])('When a step throws %p, then the code is %s', (error, code) => {
    expect(failureCode(error, false)).toBe(code);
  });

  it('When the step command itself cannot be run, then invalid_step whatever was thrown', () => {
    expect(failureCode(new Error('invalid prove job input'), true)).toBe('invalid_step');
  });
});
