import { HostCellProvider } from '../../../runner/src/cells/providers/host.js';
import { probeBubblewrap } from '../../../runner/src/cells/bubblewrapProbe.js';
import { describeCellProviderConformance } from './conformance.js';

describeCellProviderConformance({
  title: 'host (bubblewrap)',
  make: async () => {
    const probe = await probeBubblewrap();
    if (!probe.usable) return { unavailable: probe.reason };
    return { provider: new HostCellProvider({ bubblewrap: 'require' }) };
  },
});

// The degraded path must honour the same contract: it is what users without bubblewrap get.
describeCellProviderConformance({
  title: 'host (plain subprocess fallback)',
  make: async () => ({ provider: new HostCellProvider({ bubblewrap: 'off' }) }),
});
