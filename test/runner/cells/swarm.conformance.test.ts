import { SwarmCellProvider } from '../../../runner/src/cells/providers/swarmCellProvider.js';
import { DOCKER_WORKDIR } from '../../../runner/src/cells/dockerContainerSpec.js';
import { TEST_IMAGES } from '../../helpers/docker.js';
import { swarmUnavailable, TEST_SWARM_REGISTRY } from '../../helpers/swarm.js';
import { describeCellProviderConformance } from './conformance.js';

describeCellProviderConformance({
  title: 'swarm',
  image: TEST_IMAGES.busybox,
  mountedAt: () => DOCKER_WORKDIR,
  make: async () => {
    const why = await swarmUnavailable();
    return why ? { unavailable: why } : { provider: new SwarmCellProvider({ registry: TEST_SWARM_REGISTRY }) };
  },
});
