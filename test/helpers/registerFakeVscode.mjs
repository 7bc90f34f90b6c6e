import { register } from 'node:module';

register('./fakeVscodeHooks.mjs', import.meta.url);
