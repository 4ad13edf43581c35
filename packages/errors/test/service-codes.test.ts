import express from 'express';
import request from 'supertest';
import { AppError, defineErrorCodes, ErrorEnvelope, errorHandler } from '../src/index';

const silent = { error: () => undefined, warn: () => undefined };

describe('codes declared by one service', () => {
  const CODES = defineErrorCodes({ csrf_failed: 403, quota_exceeded: 429 });

  it('When a service code is thrown, then the envelope carries it with its declared status', async () => {
    const app = express();
    app.get('/x', () => {
      throw new AppError(CODES.quota_exceeded, 'monthly quota used', { headers: { 'Retry-After': '60' } });
    });
    app.use(errorHandler(silent));
    const res = await request(app).get('/x');
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBe('60');
    expect(res.body).toEqual({
      error: 'monthly quota used',
      code: 'quota_exceeded',
      requestId: expect.any(String),
    });
    expect(ErrorEnvelope.safeParse(res.body).success).toBe(true);
  });

  it('When a declared code is malformed, out of the error range or a shared code, then declaring it throws', () => {
    expect(() => defineErrorCodes({ 'Bad-Code': 400 })).toThrow(/snake_case/);
    expect(() => defineErrorCodes({ teapot: 302 })).toThrow(/400–599/);
    expect(() => defineErrorCodes({ not_found: 404 })).toThrow(/shared/);
  });
});
