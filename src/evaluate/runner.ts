import type { Decision, EvaluateResponse } from '../api/types.js';
import type { Expected } from '../record/groupCommit.js';
import type { ChallengeChanges } from '../state/challenges.js';
import { prepareEvent, type PreparedEvent } from '../store/eventWrites.js';
import { evaluateBody } from './body.js';
import { commitFailed, type Evaluator } from './evaluator.js';
import type { Landed } from './landed.js';
import type { EvaluationThread } from './thread.js';

/** An evaluation's answer as it is sent: its JSON text, and what the metrics count it by. */
export interface Answer {
  json: string;
  operationKey: string;
  decision: Decision;
}

// Made where the evaluation ran: from the thread the answer crosses as one string, not as an
// object the HTTP thread would copy and then serialize again.
export const answerOf = (response: EvaluateResponse): Answer => ({ json: JSON.stringify(response), operationKey: response.operationKey, decision: response.decision });

/** Read back from the answer's text: only a failed commit needs it, so nothing else carries it. */
const telemetryIdOf = (answer: Answer): string => (JSON.parse(answer.json) as EvaluateResponse).telemetryId;

/** What a runner was handed, filled in as it goes (a Server-Timing header's source). */
export interface EvaluationTiming {
  /** performance.now() when the evaluation had its answer and the wait for the commit began. */
  evaluated?: number;
}

/**
 * Where POST /api/evaluate's body goes: the evaluation thread (the default) or an Evaluator in this
 * thread (TPS_EVALUATE_THREAD=false). Either answers only once the event is committed.
 */
export interface EvaluationRunner {
  evaluate(environment: string, text: string, timing?: EvaluationTiming): Promise<Answer>;
}

/** What a runner gets back from an evaluation: `challenges` as in Evaluation. */
export interface Evaluated {
  answer: Answer;
  event: PreparedEvent;
  challenges?: ChallengeChanges;
}

type Evaluate = (environment: string, text: string) => Promise<Evaluated>;
/** Where the evaluation's challenge store is (the evaluation thread's, or this thread's). */
type Revert = (changes: ChallengeChanges) => Promise<void>;
/** The group commit (record/groupCommit.ts), told of each event as its evaluation starts. */
interface Commits {
  expect(): Expected<PreparedEvent>;
}

/**
 * Evaluates, then commits the event; the answer leaves only after its commit. A failed commit's
 * 503 leaves only after its evaluation's challenges are reverted, so the retry it asks for finds them;
 * one that may have landed is looked up in the store (`landed`), and answered if it did.
 */
const runner = (evaluate: Evaluate, revert: Revert, commits: Commits, landed?: Landed): EvaluationRunner => ({
  async evaluate(environment, text, timing) {
    const coming = commits.expect();
    const { answer, event, challenges } = await evaluate(environment, text).catch((err: unknown) => {
      coming.withdraw();
      throw err;
    });
    if (timing) timing.evaluated = performance.now();
    await coming.append(event).catch((err: unknown) => commitFailed(err, challenges, revert, { environment, telemetryId: telemetryIdOf(answer) }, landed));
    return answer;
  },
});

export const threadRunner = (thread: EvaluationThread, commits: Commits, landed?: Landed): EvaluationRunner =>
  runner(
    (environment, text) => thread.evaluate(environment, text),
    (changes) => thread.revert(changes),
    commits,
    landed,
  );

/** In this thread: the evaluator has no `record` of its own; the runner commits, as for the thread. */
export const localRunner = (evaluator: Evaluator, commits: Commits, landed?: Landed): EvaluationRunner =>
  runner(
    async (environment, text) => {
      const { response, event, challenges } = await evaluateBody(evaluator, environment, text);
      return { answer: answerOf(response), event: prepareEvent(event), challenges };
    },
    evaluator.revert,
    commits,
    landed,
  );
