/** The swarm (its manager, registry or engine) cannot serve a cell now: a provider error, not bad input. */
export class SwarmUnavailableError extends Error {
  override readonly name = 'SwarmUnavailableError';
}
