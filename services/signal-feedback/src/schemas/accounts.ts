import { z } from 'zod';

/** Subscription plans (README, "Plans and quotas"): stored on each user, shown by GET /api/auth/me. */
export const PlanName = z.enum(['free', 'builder', 'growth', 'scale']);
/** One of the plans. */
export type PlanName = z.infer<typeof PlanName>;

/** Sign-up and log-in body. */
export const Credentials = z.object({
  email: z
    .email()
    .max(254)
    .transform((e) => e.toLowerCase()),
  password: z.string().min(1).max(1024),
});

/** Sign-up body: passwords of 10 to 1024 characters. */
export const SignupBody = Credentials.extend({
  password: z.string().min(10, 'at least 10 characters').max(1024),
});

/** The signed-in user with plan, limits, usage and the CSRF token for writes. */
export const Me = z.object({
  user: z.object({
    id: z.uuid(),
    email: z.string(),
    plan: PlanName,
    created_at: z.iso.datetime(),
  }),
  csrf_token: z.string().describe('send it as x-csrf-token on every cookie-authenticated write'),
  limits: z.object({
    signals_per_month: z.int(),
    proposals_per_month: z.int().nullable(),
    deployments_per_month: z.int().nullable(),
    products: z.int().nullable(),
  }),
  usage: z.object({
    month: z.string(),
    signals: z.int(),
    proposals: z.int(),
    deployments: z.int(),
    products: z.int(),
    resets_at: z.iso.datetime(),
  }),
});
/** A {@link Me}. */
export type Me = z.infer<typeof Me>;
