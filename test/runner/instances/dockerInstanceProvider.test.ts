import { DockerInstanceProvider } from '../../../runner/src/instances/providers/dockerInstanceProvider.js';
import { dockerUnavailable, TEST_IMAGES } from '../../helpers/docker.js';
import { requireFeature } from '../../helpers/requirement.js';
import { describeInstanceProviderConformance } from './instanceProviderConformance.js';

describeInstanceProviderConformance({
  name: 'docker',
  make: (stateDir) => new DockerInstanceProvider({ stateDir }),
  spec: { provider: 'docker', image: TEST_IMAGES.busybox },
  require: async (ctx) => {
    const why = await dockerUnavailable(TEST_IMAGES.busybox);
    requireFeature(ctx, why === null, why ?? '');
  },
});
