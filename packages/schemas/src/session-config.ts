import { z } from 'zod';

/**
 * Founder profiles (services/pipeline-runner/README.md,
 * "session_config in the math (`src/domain/feasibility.ts`)").
 */
export const Profile = z.enum([
  'Solo',
  'Small Team (2-3)',
  'Small Team (4-5)',
  'Funded Team (6-15)',
  'Enterprise',
]);
/** Budgets. */
export const Budget = z.enum(['$1K', '$5K', '$10K', '$25K', '$50K', '$100K+']);
/** Timelines. */
export const Timeline = z.enum(['2 weeks', '4 weeks', '4-8 weeks', '8-12 weeks', '3-6 months']);
/** Revenue thresholds below which ideas are tagged LOW_ROI. */
export const RevenueThreshold = z.enum(['$10K/year', '$50K/year', '$100K/year', '$500K/year', '$1M+/year']);

/** Maximum length of `founder_signal`, in characters. */
export const FOUNDER_SIGNAL_MAX = 2000;
/** Maximum length of the string form of session_config, in characters. */
export const SESSION_CONFIG_STRING_MAX = 5000;

/** The object form of session_config: every field optional, enum-validated, no extra properties. */
export const SessionConfigObject = z.strictObject({
  profile: Profile.optional(),
  budget: Budget.optional(),
  timeline: Timeline.optional(),
  revenue_threshold: RevenueThreshold.optional(),
  founder_signal: z.string().max(FOUNDER_SIGNAL_MAX).optional(),
});
export type SessionConfigObject = z.infer<typeof SessionConfigObject>;

/** A fully resolved session_config: the caller's values over {@link SESSION_CONFIG_DEFAULTS}. */
export interface SessionConfig {
  profile: z.infer<typeof Profile>;
  budget: z.infer<typeof Budget>;
  timeline: z.infer<typeof Timeline>;
  revenue_threshold: z.infer<typeof RevenueThreshold>;
  founder_signal: string | null;
}

/**
 * The defaults of omitted fields: "Small Team, $10K, 4-8 weeks, $100K". That default profile and
 * threshold are not members of their enums; they are read as the nearest members, `Small Team (2-3)`
 * and `$100K/year`.
 */
export const SESSION_CONFIG_DEFAULTS: SessionConfig = {
  profile: 'Small Team (2-3)',
  budget: '$10K',
  timeline: '4-8 weeks',
  revenue_threshold: '$100K/year',
  founder_signal: null,
};

const LINE_KEYS = {
  profile: 'profile',
  budget: 'budget',
  timeline: 'timeline',
  revenue_threshold: 'revenue_threshold',
  signal: 'founder_signal',
} as const;

/**
 * Parses the string form (`Profile: Solo\nBudget: $5K\n...\nSignal: free text`) into the object form.
 * Blank lines are ignored; an unknown key, a repeated key or a line without `Key: value` is an issue.
 */
function parseSessionConfigString(text: string, ctx: z.RefinementCtx): SessionConfigObject {
  const out: Record<string, string> = {};
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (!line) return;
    const match = /^([A-Za-z_]+)\s*:\s*(.*)$/.exec(line);
    const key = match?.[1]?.toLowerCase();
    const field = key === undefined ? undefined : LINE_KEYS[key as keyof typeof LINE_KEYS];
    if (!match || !field) {
      ctx.addIssue({
        code: 'custom',
        message: `line ${index + 1}: expected "Profile:", "Budget:", "Timeline:", "Revenue_threshold:" or "Signal:"`,
      });
      return;
    }
    if (field in out) {
      ctx.addIssue({ code: 'custom', message: `line ${index + 1}: ${match[1]} given twice` });
      return;
    }
    out[field] = (match[2] ?? '').trim();
  });
  const parsed = SessionConfigObject.safeParse(out);
  if (!parsed.success) {
    for (const issue of parsed.error.issues)
      ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
    return {};
  }
  return parsed.data;
}

/**
 * session_config as accepted by both compute endpoints (services/market-intel/README.md,
 * "Endpoints"): the object form, or the string form (at most 5000 chars), or omitted/empty; always
 * resolved to a full {@link SessionConfig} with the defaults filled in.
 */
export const SessionConfigInput = z
  .union([SessionConfigObject, z.string().max(SESSION_CONFIG_STRING_MAX)])
  .optional()
  .transform((value, ctx): SessionConfig => {
    const given = typeof value === 'string' ? parseSessionConfigString(value, ctx) : (value ?? {});
    return {
      profile: given.profile ?? SESSION_CONFIG_DEFAULTS.profile,
      budget: given.budget ?? SESSION_CONFIG_DEFAULTS.budget,
      timeline: given.timeline ?? SESSION_CONFIG_DEFAULTS.timeline,
      revenue_threshold: given.revenue_threshold ?? SESSION_CONFIG_DEFAULTS.revenue_threshold,
      founder_signal: given.founder_signal ?? null,
    };
  });
