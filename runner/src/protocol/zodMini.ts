/**
 * zod's functional build for the schemas every command's start path evaluates (CellSpec,
 * CellResult, health). zod's chainable build cannot be tree-shaken: importing it costs about
 * 60 ms per process (npm run bench, CLI startup), which a one-shot `cell run` pays in full.
 * Both builds share one core, so these schemas compose with the chainable ones elsewhere.
 * The functional build ships no messages: English is configured here, once.
 */
import { config } from 'zod/mini';
import en from 'zod/v4/locales/en.js';

config(en());

// Re-exported name by name (not as one namespace object) so the bundle keeps only what is used.
export * from 'zod/mini';
