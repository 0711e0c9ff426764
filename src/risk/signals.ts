import { ownProperty } from '../policy/direct.js';
import type { SignalSpec } from '../policy/schema.js';

/** A signal as it runs: reads one fact and maps it to 0..1. Built once per configuration. */
export interface CompiledSignal {
  name: string;
  weight: number;
  reason: string;
  reasonAt: number;
  spec: SignalSpec;
  measure(facts: object): number;
}

const clamp01 = (x: number) => (x < 0 ? 0 : x > 1 ? 1 : x);

export function pathGetter(dotted: string): (root: object) => unknown {
  const parts = dotted.split('.');
  return (root) => {
    let value: unknown = root;
    for (const p of parts) value = ownProperty(value, p);
    return value;
  };
}

function transformOf(spec: SignalSpec): (v: unknown) => number | undefined {
  const [from, to] = (spec.range ?? [0, 1]) as [number, number];
  switch (spec.transform) {
    case 'flag': {
      const target = spec.equals ?? true;
      return (v) => (v === undefined || v === null ? undefined : v === target ? 1 : 0);
    }
    case 'clamp':
      return (v) => (typeof v === 'number' ? clamp01(v) : typeof v === 'boolean' ? (v ? 1 : 0) : undefined);
    case 'inverse':
      return (v) => (typeof v === 'number' ? 1 - clamp01(v) : undefined);
    case 'ramp':
      return (v) => (typeof v === 'number' ? (to === from ? (v >= to ? 1 : 0) : clamp01((v - from) / (to - from))) : undefined);
    case 'nonEmpty':
      return (v) => (Array.isArray(v) ? (v.length > 0 ? 1 : 0) : undefined);
    case 'map': {
      // A Map, not the object: the caller's string is a key, and "constructor" or "__proto__" must
      // not read what every object inherits.
      const values = new Map(Object.entries((spec.values ?? {}) as Record<string, number>));
      return (v) => (typeof v === 'string' ? (values.get(v) ?? 0) : undefined);
    }
    case 'between':
      // from > to wraps around, as late-night hours 22..5 do.
      return (v) => (typeof v === 'number' ? ((from <= to ? v >= from && v <= to : v >= from || v <= to) ? 1 : 0) : undefined);
    default:
      throw new Error(`unknown transform ${String(spec.transform)}`);
  }
}

export const DEFAULT_REASON_AT = 0.5;

export function compileSignal(name: string, spec: SignalSpec, weight = spec.weight): CompiledSignal {
  const read = pathGetter(spec.fact);
  const transform = transformOf(spec);
  const missing = spec.missing ?? 0;
  return {
    name,
    weight,
    reason: spec.reason ?? name,
    reasonAt: spec.reasonAt ?? DEFAULT_REASON_AT,
    spec,
    measure: (facts) => transform(read(facts)) ?? missing,
  };
}
