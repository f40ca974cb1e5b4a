/** Requests a key may make per window. */
export interface Limits {
  readonly perMinute: number;
  readonly perDay: number;
}

export type PlanName = 'free' | 'pro' | 'business' | 'enterprise';

/** The specification's plans. Enterprise has no defaults: its keys carry their own limits. */
export const PLAN_LIMITS: Readonly<Record<Exclude<PlanName, 'enterprise'>, Limits>> = {
  free: { perMinute: 60, perDay: 1_000 },
  pro: { perMinute: 300, perDay: 10_000 },
  business: { perMinute: 1_000, perDay: 100_000 },
};

export const PLAN_NAMES: readonly PlanName[] = ['free', 'pro', 'business', 'enterprise'];
