// Command upstream-ccm is the stock k8s.io/cloud-provider cloud-controller-manager (the library's
// own command, as its sample/basic_main.go builds it) with the library's `fake` provider
// registered as "fake". `deno task bench peers` runs it beside Keelson on the same
// kube-apiserver, with the same flags (client budget, one worker, no leader election).
//
// The fake provider answers every call at once: one external IP for every load balancer, and
// for each Node the providerID fake://<name>, its provided-node-ip (or 10.255.0.1) as InternalIP,
// fixed zone/region/instance type. So the figures measure the controllers and their API use,
// which is what the comparison is about.
package main

import (
	"context"
	"io"
	"net"
	"os"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/fake"
	"k8s.io/cloud-provider/names"
	"k8s.io/cloud-provider/options"
	"k8s.io/component-base/cli"
	cliflag "k8s.io/component-base/cli/flag"
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // rest_client_* metrics, as the sample
	"k8s.io/klog/v2"
)

const providedNodeIP = "alpha.kubernetes.io/provided-node-ip"

func main() {
	vip := v1.LoadBalancerIPModeVIP
	cloud := &fake.Cloud{
		EnableInstancesV2:  true,
		ExistsByProviderID: true,
		Exists:             true,
		DisableRoutes:      true,
		ExternalIP:         net.ParseIP("198.18.0.1"),
		BalancerIPMode:     &vip,
		Zone:               cloudprovider.Zone{FailureDomain: "z1", Region: "r1"},
		Provider:           "fake",
	}
	cloud.OverrideInstanceMetadata = func(_ context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
		ip := node.Annotations[providedNodeIP]
		if ip == "" {
			ip = "10.255.0.1"
		}
		return &cloudprovider.InstanceMetadata{
			ProviderID:   "fake://" + node.Name,
			InstanceType: "bench",
			NodeAddresses: []v1.NodeAddress{
				{Type: v1.NodeInternalIP, Address: ip},
				{Type: v1.NodeHostName, Address: node.Name},
			},
			Zone:   "z1",
			Region: "r1",
		}, nil
	}
	cloudprovider.RegisterCloudProvider("fake", func(io.Reader) (cloudprovider.Interface, error) {
		return cloud, nil
	})

	ccmOptions, err := options.NewCloudControllerManagerOptions()
	if err != nil {
		klog.Fatalf("unable to initialize command options: %v", err)
	}
	command := app.NewCloudControllerManagerCommand(ccmOptions, initCloud,
		app.DefaultInitFuncConstructors, names.CCMControllerAliases(), cliflag.NamedFlagSets{},
		wait.NeverStop)
	os.Exit(cli.Run(command))
}

func initCloud(c *config.CompletedConfig) cloudprovider.Interface {
	cloud, err := cloudprovider.InitCloudProvider(c.ComponentConfig.KubeCloudShared.CloudProvider.Name,
		c.ComponentConfig.KubeCloudShared.CloudProvider.CloudConfigFile)
	if err != nil || cloud == nil {
		klog.Fatalf("cloud provider could not be initialized: %v", err)
	}
	return cloud
}
