import { DockerCellProvider } from '../../../runner/src/cells/providers/dockerCellProvider.js';
import { DOCKER_WORKDIR } from '../../../runner/src/cells/dockerContainerSpec.js';
import { dockerUnavailable, TEST_IMAGES } from '../../helpers/docker.js';
import { describeCellProviderConformance } from './conformance.js';

describeCellProviderConformance({
  title: 'docker',
  image: TEST_IMAGES.busybox,
  mountedAt: () => DOCKER_WORKDIR,
  make: async () => {
    const why = await dockerUnavailable(TEST_IMAGES.busybox);
    return why ? { unavailable: why } : { provider: new DockerCellProvider() };
  },
});
