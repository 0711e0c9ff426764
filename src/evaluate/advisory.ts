import type { AiAssessment } from '../api/types.js';
import type { Facts } from '../facts/facts.js';
import type { CompiledOperation } from '../policy/catalog.js';
import type { CompiledPolicy } from '../policy/compile.js';
import type { RiskAssessment } from '../risk/score.js';

export interface AdvisoryInput {
  operation: CompiledOperation;
  policy: CompiledPolicy;
  facts: Facts;
  risk: RiskAssessment;
}

/** The AI advisory as the evaluate path sees it: may return an assessment, never throws. */
export interface AdvisoryPort {
  assess(input: AdvisoryInput): Promise<AiAssessment | undefined>;
}
