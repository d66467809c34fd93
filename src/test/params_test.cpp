// fi_param_define / fi_param_get / fi_getparams.
#include "src/params.h"
#include "src/test/fake_providers.h"

#include <rdma/fabric.h>
#include <rdma/providers/fi_prov.h>

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace {

fi_provider test_prov = {1, FI_VERSION(1, 17), {}, "ofi_param-test", nullptr, nullptr, nullptr};

class ParamsTest : public ::testing::Test {
protected:
	ParamsTest() { ofi::core::reset_params_for_test(); }
	~ParamsTest() override { ofi::core::reset_params_for_test(); }
};

TEST_F(ParamsTest, EnvironmentNames)
{
	EXPECT_EQ(ofi::core::param_env_name(&test_prov, "buffer_size"),
		  "FI_OFI_PARAM_TEST_BUFFER_SIZE");
	EXPECT_EQ(ofi::core::param_env_name(nullptr, "log_level"), "FI_LOG_LEVEL");
}

TEST_F(ParamsTest, IntValues)
{
	ASSERT_EQ(fi_param_define(&test_prov, "count", FI_PARAM_INT, "how many (default %d)", 3),
		  0);
	int value = 42;
	{
		ScopedEnv env("FI_OFI_PARAM_TEST_COUNT", nullptr);
		EXPECT_EQ(fi_param_get_int(&test_prov, "count", &value), -FI_ENODATA);
		EXPECT_EQ(value, 42);
	}
	{
		ScopedEnv env("FI_OFI_PARAM_TEST_COUNT", "-17");
		EXPECT_EQ(fi_param_get_int(&test_prov, "count", &value), 0);
		EXPECT_EQ(value, -17);
	}
	{
		ScopedEnv env("FI_OFI_PARAM_TEST_COUNT", "12abc");
		EXPECT_EQ(fi_param_get_int(&test_prov, "count", &value), -FI_EINVAL);
		EXPECT_EQ(value, -17);
	}
	{
		ScopedEnv env("FI_OFI_PARAM_TEST_COUNT", "99999999999");
		EXPECT_EQ(fi_param_get_int(&test_prov, "count", &value), -FI_EINVAL);
	}
}

TEST_F(ParamsTest, BoolSpellings)
{
	ASSERT_EQ(fi_param_define(&test_prov, "flag", FI_PARAM_BOOL, "a switch"), 0);
	for (const char *yes : {"1", "yes", "TRUE", "On"}) {
		ScopedEnv env("FI_OFI_PARAM_TEST_FLAG", yes);
		int value = -1;
		EXPECT_EQ(fi_param_get_bool(&test_prov, "flag", &value), 0) << yes;
		EXPECT_EQ(value, 1) << yes;
	}
	for (const char *no : {"0", "no", "False", "OFF"}) {
		ScopedEnv env("FI_OFI_PARAM_TEST_FLAG", no);
		int value = -1;
		EXPECT_EQ(fi_param_get_bool(&test_prov, "flag", &value), 0) << no;
		EXPECT_EQ(value, 0) << no;
	}
	ScopedEnv env("FI_OFI_PARAM_TEST_FLAG", "maybe");
	int value = -1;
	EXPECT_EQ(fi_param_get_bool(&test_prov, "flag", &value), -FI_EINVAL);
	EXPECT_EQ(value, -1);
}

TEST_F(ParamsTest, SizeAndStringValues)
{
	ASSERT_EQ(fi_param_define(&test_prov, "bytes", FI_PARAM_SIZE_T, "size"), 0);
	ASSERT_EQ(fi_param_define(&test_prov, "iface", FI_PARAM_STRING, "name"), 0);
	size_t size = 0;
	{
		ScopedEnv env("FI_OFI_PARAM_TEST_BYTES", "65536");
		EXPECT_EQ(fi_param_get_size_t(&test_prov, "bytes", &size), 0);
		EXPECT_EQ(size, 65536u);
	}
	{
		ScopedEnv env("FI_OFI_PARAM_TEST_BYTES", "-1");
		EXPECT_EQ(fi_param_get_size_t(&test_prov, "bytes", &size), -FI_EINVAL);
	}
	ScopedEnv env("FI_OFI_PARAM_TEST_IFACE", "eth0");
	char *name = nullptr;
	EXPECT_EQ(fi_param_get_str(&test_prov, "iface", &name), 0);
	EXPECT_STREQ(name, "eth0");
}

TEST_F(ParamsTest, UndefinedAndInvalidDefinitions)
{
	int value = 5;
	EXPECT_EQ(fi_param_get_int(&test_prov, "never_defined", &value), -FI_ENOENT);
	EXPECT_EQ(value, 5);
	EXPECT_EQ(fi_param_get_int(&test_prov, nullptr, &value), -FI_EINVAL);
	EXPECT_EQ(fi_param_define(&test_prov, nullptr, FI_PARAM_INT, "x"), -FI_EINVAL);
	EXPECT_EQ(fi_param_define(&test_prov, "x", FI_PARAM_INT, ""), -FI_EINVAL);
	EXPECT_EQ(fi_param_define(&test_prov, "x", static_cast<fi_param_type>(17), "x"),
		  -FI_EINVAL);
	ASSERT_EQ(fi_param_define(&test_prov, "twice", FI_PARAM_INT, "x"), 0);
	EXPECT_EQ(fi_param_define(&test_prov, "twice", FI_PARAM_INT, "x"), -FI_EALREADY);
}

TEST_F(ParamsTest, CoreParametersThroughNullProvider)
{
	ScopedEnv env("FI_UNIVERSE_SIZE", "128");
	size_t size = 0;
	EXPECT_EQ(fi_param_get_size_t(nullptr, "universe_size", &size), 0);
	EXPECT_EQ(size, 128u);
}

TEST_F(ParamsTest, GetParamsListsDefinitionsWithValues)
{
	ASSERT_EQ(fi_param_define(&test_prov, "listed", FI_PARAM_INT, "help %s", "text"), 0);
	ScopedEnv env("FI_OFI_PARAM_TEST_LISTED", "7");
	fi_param *params = nullptr;
	int count = 0;
	ASSERT_EQ(fi_getparams(&params, &count), 0);
	bool found_listed = false, found_provider = false, found_log_level = false;
	for (int i = 0; i < count; ++i) {
		std::string name = params[i].name;
		if (name == "FI_OFI_PARAM_TEST_LISTED") {
			found_listed = true;
			EXPECT_EQ(params[i].type, FI_PARAM_INT);
			EXPECT_STREQ(params[i].help_string, "ofi_param-test: help text");
			EXPECT_STREQ(params[i].value, "7");
		}
		found_provider |= name == "FI_PROVIDER";
		found_log_level |= name == "FI_LOG_LEVEL";
	}
	EXPECT_EQ(params[count].name, nullptr);
	EXPECT_TRUE(found_listed);
	EXPECT_TRUE(found_provider);
	EXPECT_TRUE(found_log_level);
	fi_freeparams(params);
	EXPECT_EQ(fi_getparams(nullptr, &count), -FI_EINVAL);
	fi_freeparams(nullptr);
}

} // namespace
